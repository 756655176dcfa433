package nldev

func fillQP(d *values, idx uint32, name string, e []byte, qp *QP) error {
	qp.DevIndex, qp.DevName = idx, name
	var haveLQPN bool
	it := attrs{b: e}
	for t, v, ok := it.next(); ok; t, v, ok = it.next() {
		switch t {
		case AttrPortIndex:
			qp.Port = d.u32(t, v)
		case AttrResLQPN:
			qp.LQPN, haveLQPN = d.u32(t, v), true
		case AttrResRQPN:
			qp.RQPN, qp.HasRQPN = d.u32(t, v), true
		case AttrResRQPSN:
			qp.RQPSN, qp.HasRQPSN = d.u32(t, v), true
		case AttrResSQPSN:
			qp.SQPSN = d.u32(t, v)
		case AttrResPDN:
			qp.PDN, qp.HasPDN = d.u32(t, v), true
		case AttrResPathMigState:
			qp.PathMig, qp.HasPathMig = d.u8(t, v), true
		case AttrResType:
			// mlx5 sends RES_TYPE twice for driver QPs; the later value (0xff) wins, as in iproute2.
			qp.Type = d.u8(t, v)
		case AttrResState:
			qp.State = d.u8(t, v)
		case AttrResPID:
			qp.PID = d.u32(t, v)
		case AttrResKernName:
			qp.KernName = d.str(v)
		case AttrResSubtype:
			qp.Subtype = d.str(v)
		}
	}
	if err := firstErr(it.err, d.err); err != nil {
		return err
	}
	if !haveLQPN {
		return missing(AttrResLQPN)
	}
	return nil
}

func fillCQ(d *values, idx uint32, name string, e []byte, cq *CQ) error {
	cq.DevIndex, cq.DevName = idx, name
	it := attrs{b: e}
	for t, v, ok := it.next(); ok; t, v, ok = it.next() {
		switch t {
		case AttrResCQN:
			cq.CQN = d.u32(t, v)
		case AttrResCQE:
			cq.CQE = d.u32(t, v)
		case AttrResUseCnt:
			cq.Users = d.u64(t, v)
		case AttrResPollCtx:
			cq.PollCtx, cq.HasPollCtx = d.u8(t, v), true
		case AttrDevDIM:
			cq.DIM, cq.HasDIM = d.u8(t, v) != 0, true
		case AttrResCtxN:
			cq.CtxN, cq.HasCtxN = d.u32(t, v), true
		case AttrResPID:
			cq.PID = d.u32(t, v)
		case AttrResKernName:
			cq.KernName = d.str(v)
		}
	}
	return firstErr(it.err, d.err)
}

func fillMR(d *values, idx uint32, name string, e []byte, mr *MR) error {
	mr.DevIndex, mr.DevName = idx, name
	it := attrs{b: e}
	for t, v, ok := it.next(); ok; t, v, ok = it.next() {
		switch t {
		case AttrResMRN:
			mr.MRN = d.u32(t, v)
		case AttrResRKey:
			mr.RKey, mr.HasKeys = d.u32(t, v), true
		case AttrResLKey:
			mr.LKey, mr.HasKeys = d.u32(t, v), true
		case AttrResIOVA:
			mr.IOVA, mr.HasKeys = d.u64(t, v), true
		case AttrResMRLen:
			mr.Len = d.u64(t, v)
		case AttrResPDN:
			mr.PDN = d.u32(t, v)
		case AttrResPID:
			mr.PID = d.u32(t, v)
		case AttrResKernName:
			mr.KernName = d.str(v)
		}
	}
	return firstErr(it.err, d.err)
}

func fillPD(d *values, idx uint32, name string, e []byte, pd *PD) error {
	pd.DevIndex, pd.DevName = idx, name
	it := attrs{b: e}
	for t, v, ok := it.next(); ok; t, v, ok = it.next() {
		switch t {
		case AttrResPDN:
			pd.PDN = d.u32(t, v)
		case AttrResLocalDMALKey:
			pd.LocalDMALKey = d.u32(t, v)
		case AttrResUnsafeGlobalR:
			pd.UnsafeGlobalRKey, pd.HasUnsafeRKey = d.u32(t, v), true
		case AttrResUseCnt:
			pd.Users = d.u64(t, v)
		case AttrResCtxN:
			pd.CtxN, pd.HasCtxN = d.u32(t, v), true
		case AttrResPID:
			pd.PID = d.u32(t, v)
		case AttrResKernName:
			pd.KernName = d.str(v)
		}
	}
	return firstErr(it.err, d.err)
}

func fillRaw(_ *values, idx uint32, name string, e []byte, r *Raw) error {
	r.DevIndex, r.DevName = idx, name
	it := attrs{b: e}
	found := false
	for t, v, ok := it.next(); ok; t, v, ok = it.next() {
		if t == AttrResRaw {
			// Copied: the reply buffer is not kept alive by one context per object.
			r.Data, found = make([]byte, len(v)), true
			copy(r.Data, v)
		}
	}
	if it.err != nil {
		return it.err
	}
	if !found {
		return missing(AttrResRaw)
	}
	return nil
}
