module github.com/ringflake/ringflake/machineid_zookeeper

go 1.25.0

require (
	github.com/go-zookeeper/zk v1.0.4
	github.com/ringflake/ringflake v0.1.0
)
