// Tests of ringflake.ID and NullID through database/sql with a real driver,
// SQLite: a test-only module, so that the driver stays out of the root
// module's requirements.
module github.com/ringflake/ringflake/internal/sqltest

go 1.25.0

require (
	github.com/ringflake/ringflake v0.1.0
	github.com/stretchr/testify v1.11.1
	modernc.org/sqlite v1.59.0
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/dustin/go-humanize v1.0.1 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/ncruces/go-strftime v1.0.0 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	github.com/remyoudompheng/bigfft v0.0.0-20230129092748-24d4a6f8daec // indirect
	golang.org/x/sys v0.47.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
	modernc.org/libc v1.75.7 // indirect
	modernc.org/mathutil v1.7.1 // indirect
	modernc.org/memory v1.12.1 // indirect
)
