package plugins

import "os/exec"

var execLookPath = exec.LookPath
