// Package yamlfile decodes AgentRunner's task.yaml for `task import`. It
// is the only importer of the YAML decoder, whose package initialisation
// every command paid: git-agentmine has agentmine-serve decode the file
// (see package serverargs), so that only that program links it.
package yamlfile

import (
	"bytes"

	"gopkg.in/yaml.v3"

	"github.com/git-agentmine/git-agentmine/plan"
)

// Decode decodes a task.yaml's data; the error is io.EOF for an empty one,
// else the YAML decoder's (see plan.TaskYAMLDecodeError).
func Decode(data []byte) (plan.TaskYAML, error) {
	var y plan.TaskYAML
	err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&y)
	return y, err
}
