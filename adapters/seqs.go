package adapters

import "iter"

// ProvisionalSeq is where provisional seqs start. A writer that knows a
// step only from telemetry, before the agent's own record of it arrives,
// numbers it from here (capture numbers such steps in arrival order). When
// a parser reads the agent's record of that step, the step takes the seq
// the parser gives it, so it finds its place in the session; no parser
// numbers this high.
const ProvisionalSeq int64 = 1 << 40

// KeepStoredSeqs makes a re-read session agree with the seqs already
// stored for it. A parser numbers steps in the order it reads them, which
// stays the same when files only grow; if it changed anyway (two files of
// a live session growing at once), writing the new numbers would collide
// with stored steps. Then every stored step keeps its seq and new steps
// are numbered after the last stored one, in reading order. Provisional
// seqs (ProvisionalSeq and above) take no part: a stored step that holds
// one is new to the parser's numbering, and a step the batch gives one
// keeps it.
//
// steps yields the id of each step of the session and a pointer to its
// seq, in session order; it is iterated up to twice. The builder calls it
// before the session is split (Builder.Finish).
func KeepStoredSeqs(steps iter.Seq2[string, *int64], stored map[string]int64) {
	numbered := map[string]int64{} // stored steps with a parser's seq
	taken := map[int64]bool{}
	var last int64
	for id, seq := range stored {
		if seq < ProvisionalSeq {
			numbered[id] = seq
			taken[seq] = true
			last = max(last, seq)
		}
	}
	if len(numbered) == 0 {
		return
	}
	stored = numbered
	agree := true
	for id, seq := range steps {
		if *seq >= ProvisionalSeq {
			continue
		}
		was, ok := stored[id]
		if (ok && was != *seq) || (!ok && taken[*seq]) {
			agree = false
		}
	}
	if agree {
		return
	}
	for id, seq := range steps {
		if *seq >= ProvisionalSeq {
			continue
		}
		if was, ok := stored[id]; ok {
			*seq = was
			continue
		}
		last++
		*seq = last
	}
}
