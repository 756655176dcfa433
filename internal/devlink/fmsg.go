package devlink

import "fmt"

// A health reporter's diagnose (and dump) output is an "fmsg": a flat stream of items that
// describes a JSON-like tree (net/devlink/health.c, devlink_fmsg_prepare_skb). Objects are
// OBJ_NEST_START ... NEST_END holding pairs; a pair is PAIR_NEST_START, OBJ_NAME, a value,
// NEST_END; an array is ARR_NEST_START values NEST_END; a scalar is OBJ_VALUE_TYPE (an NLA_*
// type) followed by OBJ_VALUE_DATA. The kernel cuts the stream into as many messages as it needs,
// each carrying its part in its own FMSG nest, so nests can span messages: the items of all
// messages are concatenated before the tree is built. `devlink health diagnose` prints this tree.

// Object is an fmsg object: named fields in the order the driver wrote them (names may repeat).
type Object []Field

// Field is one name/value pair of an Object. Value is an Object, an Array, or a scalar: bool,
// uint8, uint32, uint64, string, []byte; nil for a pair without a value.
type Field struct {
	Name  string
	Value any
}

// Array is an fmsg array.
type Array []any

// Get returns the first field called name.
func (o Object) Get(name string) (any, bool) {
	for _, f := range o {
		if f.Name == name {
			return f.Value, true
		}
	}
	return nil, false
}

// Find returns the first field called name at any depth (fields before nested objects, in
// order), so that a counter is found whichever nest a driver version puts it in.
func (o Object) Find(name string) (any, bool) {
	if v, ok := o.Get(name); ok {
		return v, true
	}
	for _, f := range o {
		if v, ok := findIn(f.Value, name); ok {
			return v, true
		}
	}
	return nil, false
}

func findIn(v any, name string) (any, bool) {
	switch x := v.(type) {
	case Object:
		return x.Find(name)
	case Array:
		for _, e := range x {
			if r, ok := findIn(e, name); ok {
				return r, true
			}
		}
	}
	return nil, false
}

// Uint returns an unsigned scalar as uint64.
func Uint(v any) (uint64, bool) {
	switch x := v.(type) {
	case uint8:
		return uint64(x), true
	case uint32:
		return uint64(x), true
	case uint64:
		return x, true
	}
	return 0, false
}

// maxFmsgDepth bounds nesting. Real reporters nest four or five levels; the limit keeps a
// crafted stream from building a pathological tree.
const maxFmsgDepth = 64

// DecodeDiagnose reads a DEVLINK_CMD_HEALTH_REPORTER_DIAGNOSE reply of family fam: multipart
// messages ending with NLMSG_DONE. It returns the root object.
func DecodeDiagnose(b []byte, fam uint16) (Object, error) {
	var items []fitem
	err := walkReply(b, fam, true, func(_ uint8, payload []byte) error {
		a := attrs{b: payload}
		for t, v, ok := a.next(); ok; t, v, ok = a.next() {
			if t != AttrFmsg {
				continue
			}
			in := attrs{b: v}
			for it, iv, ok := in.next(); ok; it, iv, ok = in.next() {
				items = append(items, fitem{it, iv})
			}
			if in.err != nil {
				return fmt.Errorf("FMSG nest: %w", in.err)
			}
		}
		return a.err
	})
	if err != nil {
		return nil, err
	}
	return buildFmsg(items)
}

type fitem struct {
	t uint16
	v []byte
}

// frame is an open nest while the tree is built.
type frame struct {
	kind   uint16 // AttrFmsgObjNestStart, AttrFmsgPairNestStart or AttrFmsgArrNestStart
	obj    Object
	arr    Array
	name   string
	named  bool
	values []any
}

func (f *frame) add(v any) error {
	switch f.kind {
	case AttrFmsgPairNestStart:
		f.values = append(f.values, v)
	case AttrFmsgArrNestStart:
		f.arr = append(f.arr, v)
	default:
		return fmt.Errorf("value directly inside an object, outside a pair: %w", ErrMalformed)
	}
	return nil
}

func (f *frame) value() any {
	switch f.kind {
	case AttrFmsgObjNestStart:
		if f.obj == nil {
			return Object{}
		}
		return f.obj
	case AttrFmsgArrNestStart:
		if f.arr == nil {
			return Array{}
		}
		return f.arr
	}
	return nil
}

func buildFmsg(items []fitem) (Object, error) {
	var stack []*frame
	var root Object
	done := false
	// The kernel wraps every diagnosis in one root object whose NEST_END is the stream's last
	// end. A driver may close more nests than it opened: netdevsim's dummy reporter (Linux 6.1,
	// drivers/net/netdevsim/health.c) ends "test_nest" with an extra arr_pair_nest_end, two
	// NEST_ENDs that would close the root halfway through and orphan the fields after them.
	// `devlink health diagnose` prints those fields, so a NEST_END at root level that more
	// content follows is dropped instead of ending the tree. An extra end after all content is
	// still an error: nothing is lost by rejecting it, and nothing real sends it.
	lastContent := -1
	for i, it := range items {
		switch it.t {
		case AttrFmsgObjNestStart, AttrFmsgPairNestStart, AttrFmsgArrNestStart,
			AttrFmsgObjName, AttrFmsgObjValueType, AttrFmsgObjValueData:
			lastContent = i
		}
	}
	pendingType, hasType := uint8(0), false
	for i, it := range items {
		if done {
			return nil, fmt.Errorf("fmsg item %d (attribute %d) after the root object ended: %w", i, it.t, ErrMalformed)
		}
		switch it.t {
		case AttrFmsgObjNestStart, AttrFmsgPairNestStart, AttrFmsgArrNestStart, AttrFmsgNestEnd,
			AttrFmsgObjName, AttrFmsgObjValueType, AttrFmsgObjValueData:
		default:
			// DEVLINK_ATTR_PAD, which nla_put_u64_64bit puts between a u64's type and its data
			// where 8-byte alignment matters, and items a newer kernel might add: neither
			// carries anything this decoder can place.
			continue
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		// A flag whose value is false may come without data on old kernels: a pending type that
		// is not followed by data is a false flag.
		if hasType && it.t != AttrFmsgObjValueData {
			hasType = false
			if pendingType != TypeFlag || top == nil {
				return nil, fmt.Errorf("fmsg item %d: value type %d without data: %w", i, pendingType, ErrMalformed)
			}
			if err := top.add(false); err != nil {
				return nil, fmt.Errorf("fmsg item %d: %w", i, err)
			}
		}
		switch it.t {
		case AttrFmsgObjNestStart, AttrFmsgPairNestStart, AttrFmsgArrNestStart:
			if len(stack) >= maxFmsgDepth {
				return nil, fmt.Errorf("fmsg item %d: nesting deeper than %d: %w", i, maxFmsgDepth, ErrMalformed)
			}
			if top == nil && it.t != AttrFmsgObjNestStart {
				return nil, fmt.Errorf("fmsg item %d: stream starts with attribute %d, not an object: %w", i, it.t, ErrMalformed)
			}
			if top != nil && top.kind == AttrFmsgObjNestStart && it.t != AttrFmsgPairNestStart {
				return nil, fmt.Errorf("fmsg item %d: attribute %d directly inside an object: %w", i, it.t, ErrMalformed)
			}
			stack = append(stack, &frame{kind: it.t})
		case AttrFmsgNestEnd:
			if top == nil {
				return nil, fmt.Errorf("fmsg item %d: NEST_END without an open nest: %w", i, ErrMalformed)
			}
			if len(stack) == 1 && i < lastContent {
				continue
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				root, done = top.obj, true
				if root == nil {
					root = Object{}
				}
				continue
			}
			parent := stack[len(stack)-1]
			if top.kind == AttrFmsgPairNestStart {
				if !top.named {
					return nil, fmt.Errorf("fmsg item %d: pair without OBJ_NAME: %w", i, ErrMalformed)
				}
				if parent.kind != AttrFmsgObjNestStart {
					return nil, fmt.Errorf("fmsg item %d: pair %q outside an object: %w", i, top.name, ErrMalformed)
				}
				var v any
				switch len(top.values) {
				case 0:
				case 1:
					v = top.values[0]
				default:
					v = Array(top.values)
				}
				parent.obj = append(parent.obj, Field{Name: top.name, Value: v})
				continue
			}
			if err := parent.add(top.value()); err != nil {
				return nil, fmt.Errorf("fmsg item %d: %w", i, err)
			}
		case AttrFmsgObjName:
			if top == nil || top.kind != AttrFmsgPairNestStart || top.named {
				return nil, fmt.Errorf("fmsg item %d: OBJ_NAME %q outside a pair's start: %w", i, str(it.v), ErrMalformed)
			}
			top.name, top.named = str(it.v), true
		case AttrFmsgObjValueType:
			t, err := u8(it.t, it.v)
			if err != nil {
				return nil, fmt.Errorf("fmsg item %d: %w", i, err)
			}
			pendingType, hasType = t, true
		case AttrFmsgObjValueData:
			if !hasType {
				return nil, fmt.Errorf("fmsg item %d: value data without a type: %w", i, ErrMalformed)
			}
			hasType = false
			if top == nil {
				return nil, fmt.Errorf("fmsg item %d: value outside any nest: %w", i, ErrMalformed)
			}
			v, err := fmsgValue(pendingType, it.v)
			if err != nil {
				return nil, fmt.Errorf("fmsg item %d: %w", i, err)
			}
			if err := top.add(v); err != nil {
				return nil, fmt.Errorf("fmsg item %d: %w", i, err)
			}
		}
	}
	if hasType {
		return nil, fmt.Errorf("fmsg ends with a value type without data: %w", ErrMalformed)
	}
	if !done {
		if len(items) == 0 {
			return nil, fmt.Errorf("empty fmsg: %w", ErrMalformed)
		}
		return nil, fmt.Errorf("fmsg truncated: %d nests still open: %w", len(stack), ErrMalformed)
	}
	return root, nil
}

func fmsgValue(typ uint8, v []byte) (any, error) {
	switch typ {
	case TypeFlag:
		// Current kernels always send a u8; a bare flag attribute means true.
		if len(v) == 0 {
			return true, nil
		}
		x, err := u8(AttrFmsgObjValueData, v)
		return x != 0, err
	case TypeU8:
		return u8(AttrFmsgObjValueData, v)
	case TypeU32:
		return u32(AttrFmsgObjValueData, v)
	case TypeU64:
		return u64(AttrFmsgObjValueData, v)
	case TypeNulString:
		return str(v), nil
	case TypeBinary:
		return append([]byte(nil), v...), nil
	}
	// A type a newer kernel added is kept as its bytes rather than failing the whole diagnosis.
	return append([]byte(nil), v...), nil
}
