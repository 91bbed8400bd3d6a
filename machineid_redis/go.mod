module github.com/ringflake/ringflake/machineid_redis

go 1.25.0

require (
	github.com/redis/go-redis/v9 v9.22.0
	github.com/ringflake/ringflake v0.1.0
	github.com/stretchr/testify v1.11.1
	golang.org/x/sync v0.22.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/davecgh/go-spew v1.1.1 // indirect
	github.com/pmezard/go-difflib v1.0.0 // indirect
	go.uber.org/atomic v1.11.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
