package verbs

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// Error is a failed verb with the errno it reported.
type Error struct {
	Verb   string        // e.g. "ibv_create_qp", "ibv_modify_qp(RTR)"
	Object string        // what the verb acted on, e.g. "rxe0 port 1"
	Errno  syscall.Errno // 0 when the library reported failure without errno
}

func (e *Error) Error() string {
	s := e.Verb
	if e.Object != "" {
		s += " on " + e.Object
	}
	if e.Errno == 0 {
		return s + ": failed without errno"
	}
	return fmt.Sprintf("%s: %s (%v)", s, ErrnoName(e.Errno), e.Errno)
}

// Unwrap exposes the errno so errors.Is(err, syscall.EINVAL) works.
func (e *Error) Unwrap() error {
	if e.Errno == 0 {
		return nil
	}
	return e.Errno
}

// ErrnoName is the symbolic name of an errno ("EINVAL"), or "errno N".
func ErrnoName(e syscall.Errno) string {
	if n := unix.ErrnoName(e); n != "" {
		return n
	}
	return fmt.Sprintf("errno %d", int(e))
}

// retErrno converts the return value of a verb that returns 0, an errno,
// or a negative errno.
func retErrno(r int32) syscall.Errno {
	if r < 0 {
		r = -r
	}
	return syscall.Errno(r)
}

var wcStatusNames = [...]string{
	"IBV_WC_SUCCESS", "IBV_WC_LOC_LEN_ERR", "IBV_WC_LOC_QP_OP_ERR", "IBV_WC_LOC_EEC_OP_ERR",
	"IBV_WC_LOC_PROT_ERR", "IBV_WC_WR_FLUSH_ERR", "IBV_WC_MW_BIND_ERR", "IBV_WC_BAD_RESP_ERR",
	"IBV_WC_LOC_ACCESS_ERR", "IBV_WC_REM_INV_REQ_ERR", "IBV_WC_REM_ACCESS_ERR", "IBV_WC_REM_OP_ERR",
	"IBV_WC_RETRY_EXC_ERR", "IBV_WC_RNR_RETRY_EXC_ERR", "IBV_WC_LOC_RDD_VIOL_ERR",
	"IBV_WC_REM_INV_RD_REQ_ERR", "IBV_WC_REM_ABORT_ERR", "IBV_WC_INV_EECN_ERR",
	"IBV_WC_INV_EEC_STATE_ERR", "IBV_WC_FATAL_ERR", "IBV_WC_RESP_TIMEOUT_ERR", "IBV_WC_GENERAL_ERR",
	"IBV_WC_TM_ERR", "IBV_WC_TM_RNDV_INCOMPLETE",
}

// WCStatusName is the enum name of a work-completion status, which is what
// vendor documentation and perftest print.
func WCStatusName(s uint32) string {
	if int(s) < len(wcStatusNames) {
		return wcStatusNames[s]
	}
	return fmt.Sprintf("IBV_WC_STATUS_%d", s)
}

var eventNames = [...]string{
	"IBV_EVENT_CQ_ERR", "IBV_EVENT_QP_FATAL", "IBV_EVENT_QP_REQ_ERR", "IBV_EVENT_QP_ACCESS_ERR",
	"IBV_EVENT_COMM_EST", "IBV_EVENT_SQ_DRAINED", "IBV_EVENT_PATH_MIG", "IBV_EVENT_PATH_MIG_ERR",
	"IBV_EVENT_DEVICE_FATAL", "IBV_EVENT_PORT_ACTIVE", "IBV_EVENT_PORT_ERR", "IBV_EVENT_LID_CHANGE",
	"IBV_EVENT_PKEY_CHANGE", "IBV_EVENT_SM_CHANGE", "IBV_EVENT_SRQ_ERR", "IBV_EVENT_SRQ_LIMIT_REACHED",
	"IBV_EVENT_QP_LAST_WQE_REACHED", "IBV_EVENT_CLIENT_REREGISTER", "IBV_EVENT_GID_CHANGE",
	"IBV_EVENT_WQ_FATAL",
}

// EventName is the enum name of an async event type.
func EventName(t uint32) string {
	if int(t) < len(eventNames) {
		return eventNames[t]
	}
	return fmt.Sprintf("IBV_EVENT_%d", t)
}

var portStateNames = [...]string{"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"}

// PortStateName is the name ibv_devinfo prints for a port state.
func PortStateName(s uint32) string {
	if int(s) < len(portStateNames) {
		return portStateNames[s]
	}
	return fmt.Sprintf("state %d", s)
}

var qpStateNames = [...]string{"RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR", "UNKNOWN"}

// QPStateName is the short name of a QP state.
func QPStateName(s uint32) string {
	if int(s) < len(qpStateNames) {
		return qpStateNames[s]
	}
	return fmt.Sprintf("state %d", s)
}
