// The real-process nemesis harness of the lease stores (scripts/nemesis): a
// test-only module, so that every store's client stays out of the others'
// requirements.
module github.com/ringflake/ringflake/internal/nemesis

go 1.25.0

require (
	github.com/jackc/pgx/v5 v5.12.0
	github.com/redis/go-redis/v9 v9.22.0
	github.com/ringflake/ringflake v0.1.0
	github.com/ringflake/ringflake/machineid_etcd v0.1.0
	github.com/ringflake/ringflake/machineid_k8s v0.1.0
	github.com/ringflake/ringflake/machineid_postgres v0.1.0
	github.com/ringflake/ringflake/machineid_redis v0.1.0
	github.com/stretchr/testify v1.11.1
	go.etcd.io/etcd/client/v3 v3.6.14
	go.uber.org/zap v1.27.0
	k8s.io/client-go v0.35.6
)
