//go:build tools

// The two modules artifactgenerator.sh needs, so that go.mod/go.sum pin them.
package tools

import (
	_ "github.com/fluxcd/source-watcher/api/v2/v1beta1"
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
