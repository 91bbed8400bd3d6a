module github.com/ringflake/ringflake/benchmarks

go 1.25.0

require (
	github.com/bwmarrin/snowflake v0.3.0
	github.com/godruoyi/go-snowflake v0.0.2
	github.com/google/uuid v1.6.0
	github.com/jackc/pgx/v5 v5.12.0
	github.com/ringflake/ringflake v0.1.0
	github.com/sony/sonyflake v1.3.0
	github.com/sony/sonyflake/v2 v2.2.0
	github.com/yitter/idgenerator-go v1.3.3
)

require (
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	golang.org/x/text v0.41.0 // indirect
)
