package firmware

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// Policy is the firmware part of the fleet policy file (--policy). The file is shared with other
// layers, so only its "firmware" object is read here, strictly:
//
//	{"firmware": {"allowed_psids": ["MT_0000000838"], "min_version": {"MT_0000000838": "28.39.1002"}}}
type Policy struct {
	AllowedPSIDs []string          `json:"allowed_psids"`
	MinVersion   map[string]string `json:"min_version"`

	min map[string]Version
}

// ParsePolicy reads the policy document; a file without a "firmware" object gives nil.
func ParsePolicy(b []byte, from string) (*Policy, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	raw, ok := doc["firmware"]
	if !ok {
		return nil, nil
	}
	var p Policy
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%s: firmware: %w", from, err)
	}
	p.min = map[string]Version{}
	psids := make([]string, 0, len(p.MinVersion))
	for k := range p.MinVersion {
		psids = append(psids, k)
	}
	sort.Strings(psids)
	for _, psid := range psids {
		v, err := ParseVersion(p.MinVersion[psid])
		if err != nil {
			return nil, fmt.Errorf("%s: firmware.min_version[%q]: %w", from, psid, err)
		}
		p.min[psid] = v
	}
	return &p, nil
}

// allowed reports whether a PSID is allowed; an empty list allows every PSID.
func (p *Policy) allowed(psid string) bool {
	if len(p.AllowedPSIDs) == 0 {
		return true
	}
	for _, a := range p.AllowedPSIDs {
		if a == psid {
			return true
		}
	}
	return false
}
