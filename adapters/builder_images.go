package adapters

import (
	"encoding/json"

	"github.com/agentreview/service/store"
)

// PastedImages adds the images given with a prompt (pasted or attached) as
// an other step beside it, id the prompt's: a message payload holds text
// only. images are as the agent wrote them (image blocks, data: URIs), so
// that store.FindImages finds them the same way in every agent's steps and
// in pushed ones. Nothing is added when there are none.
func (s *Stream) PastedImages(a *Actor, id string, images []json.RawMessage, at Time) *Step {
	if len(images) == 0 {
		return nil
	}
	return s.Add(a, store.Step{
		ID: id + "#images", Type: store.TypeOther, Decision: DecisionNone, Outcome: OutcomeOK,
		Payload: store.Payload{ToolName: "pasted images", Raw: Raw(map[string]any{"content": images})},
	}, at)
}
