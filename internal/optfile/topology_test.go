package optfile

import (
	"reflect"
	"testing"
)

func TestDecodeTopology(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     *TopologyPolicy
	}{
		{"everything", `{"topology": {"devices": 8, "devices_by_driver": {"mlx5_core": 8},
		  "ports": {"infiniband": {"active": 8, "min_rate_gbps": 400}, "Ethernet": {"min_rate_gbps": 100}},
		  "ignore": ["mlx5_bond_*", "eno1"], "include_management": true}}`,
			&TopologyPolicy{Devices: 8, DevicesByDriver: map[string]int{"mlx5_core": 8},
				Ports:  map[string]PortExpectation{"InfiniBand": {Active: 8, MinRateGbps: 400}, "Ethernet": {MinRateGbps: 100}},
				Ignore: []string{"mlx5_bond_*", "eno1"}, IncludeManagement: true}},
		{"an empty section expects nothing", `{"topology": {}}`, &TopologyPolicy{}},
		{"only a count of ports", `{"topology": {"ports": {"Ethernet": {"active": 2}}}}`,
			&TopologyPolicy{Ports: map[string]PortExpectation{"Ethernet": {Active: 2}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := DecodePolicy([]byte(tc.in), "policy.json")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(p.Topology, tc.want) {
				t.Errorf("got %+v, want %+v", p.Topology, tc.want)
			}
		})
	}
}

func TestDecodeTopologyRejects(t *testing.T) {
	for _, tc := range []bad{
		{"unknown key", `{"topology": {"device": 8}}`, "topology.device", "unknown key (want devices, devices_by_driver, ports, ignore or include_management)"},
		{"count as a string", `{"topology": {"devices": "8"}}`, "topology.devices", `want an integer from 1 to 1024, got "8"`},
		{"zero devices", `{"topology": {"devices": 0}}`, "topology.devices", "got 0"},
		{"fractional count", `{"topology": {"devices": 7.5}}`, "topology.devices", "got 7.5"},
		{"count out of range", `{"topology": {"devices": 100000}}`, "topology.devices", "got 100000"},
		{"empty driver map", `{"topology": {"devices_by_driver": {}}}`, "topology.devices_by_driver", "non-empty object"},
		{"driver with a slash", `{"topology": {"devices_by_driver": {"pci/mlx5": 1}}}`, `topology.devices_by_driver["pci/mlx5"]`, "driver name"},
		{"unknown link layer", `{"topology": {"ports": {"OmniPath": {"active": 1}}}}`, `topology.ports["OmniPath"]`, `want a link layer "InfiniBand" or "Ethernet"`},
		{"link layer twice in two spellings", `{"topology": {"ports": {"InfiniBand": {"active": 1}, "infiniband": {"active": 2}}}}`, `topology.ports["infiniband"]`, "stated twice"},
		{"empty expectation", `{"topology": {"ports": {"InfiniBand": {}}}}`, `topology.ports["InfiniBand"]`, "at least one"},
		{"unknown expectation key", `{"topology": {"ports": {"InfiniBand": {"rate": 400}}}}`, `topology.ports["InfiniBand"].rate`, "unknown key (want active or min_rate_gbps)"},
		{"rate in Mb/s", `{"topology": {"ports": {"InfiniBand": {"min_rate_gbps": 400000}}}}`, `topology.ports["InfiniBand"].min_rate_gbps`, "at most 24000"},
		{"ignore empty", `{"topology": {"ignore": []}}`, "topology.ignore", "non-empty list"},
		{"ignore a bad glob", `{"topology": {"ignore": ["eno["]}}`, "topology.ignore[0]", "glob"},
		{"ignore a path", `{"topology": {"ignore": ["/sys/class/net/eno1"]}}`, "topology.ignore[0]", "without '/'"},
		{"include_management as a string", `{"topology": {"include_management": "yes"}}`, "topology.include_management", `want true or false, got "yes"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := DecodePolicy([]byte(tc.in), "policy.json")
			if err == nil {
				t.Fatalf("accepted: %+v", p.Topology)
			}
			wantErr(t, err, "policy.json", tc)
		})
	}
}

func TestTopologyIgnored(t *testing.T) {
	tp := &TopologyPolicy{Ignore: []string{"mlx5_bond_*", "eno1"}}
	for name, want := range map[string]bool{"mlx5_bond_0": true, "eno1": true, "eno12": false, "mlx5_0": false} {
		if _, got := tp.Ignored(name); got != want {
			t.Errorf("Ignored(%q) = %v, want %v", name, got, want)
		}
	}
}
