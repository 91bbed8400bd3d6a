module github.com/ringflake/ringflake/benchmarks

go 1.25.0

require (
	github.com/bwmarrin/snowflake v0.3.0
	github.com/godruoyi/go-snowflake v0.0.2
	github.com/ringflake/ringflake v0.1.0
	github.com/ringflake/ringflake/ringflakeclient v0.1.0
	github.com/sony/sonyflake v1.3.0
	github.com/sony/sonyflake/v2 v2.2.0
	github.com/yitter/idgenerator-go v1.3.3
	google.golang.org/grpc v1.84.0
)

require (
	golang.org/x/net v0.57.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.40.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260706201446-f0a921348800 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
