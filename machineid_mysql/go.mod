module github.com/ringflake/ringflake/machineid_mysql

go 1.25.0

require (
	github.com/go-sql-driver/mysql v1.10.2
	github.com/ringflake/ringflake v0.1.0
	github.com/stretchr/testify v1.11.1
	golang.org/x/sync v0.22.0
)

require (
	filippo.io/edwards25519 v1.2.0 // indirect
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
