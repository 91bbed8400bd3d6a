// The tool that builds a module proxy from the working tree, for
// scripts/release, scripts/tidy and scripts/proxytest: a module of its own,
// so that golang.org/x/mod stays out of the root module's requirements. It is
// never tagged (internal/).
module github.com/ringflake/ringflake/internal/modproxy

go 1.25.0

require (
	github.com/stretchr/testify v1.11.1
	golang.org/x/mod v0.39.0
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
