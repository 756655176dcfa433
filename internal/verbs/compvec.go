package verbs

// NumCompVectors is ibv_context.num_comp_vectors: how many completion vectors (event queues
// with their interrupts) the device offers for CQs. Added for the cq layer's vector check.
func (c *Context) NumCompVectors() int { return int(c.head().NumCompVectors) }
