package views

import (
	"testing"

	"github.com/agentreview/service/adapters/agents"
)

// TestAgentHuesDiffer gives each agent the service imports a badge colour
// of its own, so that two agents' sessions side by side in the list do
// not look alike; a kind it does not know gets one of the same colours.
func TestAgentHuesDiffer(t *testing.T) {
	seen := map[string]string{}
	for _, a := range agents.All {
		h := agentHue(a.Kind)
		if other, ok := seen[h]; ok {
			t.Errorf("%s and %s both have hue %s", a.Kind, other, h)
		}
		seen[h] = a.Kind
	}
	for _, kind := range []string{"my-agent", "x", ""} {
		if _, ok := seen[agentHue(kind)]; !ok {
			t.Errorf("agentHue(%q) = %s, not one of the palette's", kind, agentHue(kind))
		}
	}
}
