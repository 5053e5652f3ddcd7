//go:build tools

// The module pins actionlint's command; hack/build-actionlint.sh builds it.
package tools

import _ "github.com/rhysd/actionlint/cmd/actionlint"
