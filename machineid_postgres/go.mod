module github.com/ringflake/ringflake/machineid_postgres

go 1.25.0

require (
	github.com/jackc/pgx/v5 v5.12.0
	github.com/ringflake/ringflake v0.1.0
	github.com/stretchr/testify v1.11.1
	golang.org/x/sync v0.22.0
)

require (
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/kr/text v0.2.0 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	github.com/rogpeppe/go-internal v1.16.0 // indirect
	golang.org/x/text v0.41.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
