package main

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/internal/etcdtest"
	"github.com/ringflake/ringflake/internal/k8stest"
	"github.com/ringflake/ringflake/internal/mysqltest"
	"github.com/ringflake/ringflake/internal/pgtest"
	"github.com/ringflake/ringflake/internal/redistest"
	"github.com/ringflake/ringflake/machineid"
	"github.com/ringflake/ringflake/machineid_etcd"
	"github.com/ringflake/ringflake/machineid_file"
	"github.com/ringflake/ringflake/machineid_k8s"
	"github.com/ringflake/ringflake/machineid_mysql"
	"github.com/ringflake/ringflake/machineid_postgres"
	"github.com/ringflake/ringflake/machineid_redis"
)

// TestSwitchingStores moves one program from store to store by changing
// only the constructor and its client: the options, the returned type, and
// everything done with it stay as they are. Each store gets a real server.
func TestSwitchingStores(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Start(t).Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	etcd, err := clientv3.New(clientv3.Config{Endpoints: etcdtest.Start(t).Endpoints(), Logger: zap.NewNop()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = etcd.Close() })
	pool, err := pgxpool.New(ctx, pgtest.Start(t).DSN())
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	require.NoError(t, machineid_postgres.CreateTable(ctx, pool, ""))
	mysqlDB, err := sql.Open("mysql", mysqltest.Shared(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = mysqlDB.Close() })
	require.NoError(t, machineid_mysql.CreateTable(ctx, mysqlDB, ""))
	dir := t.TempDir()
	kube := k8stest.Start(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", kube.Kubeconfig(k8stest.Admin))
	require.NoError(t, err)
	clientset, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)

	// The program: the options, and what it does with its Holder.
	opts := []machineid.Option{machineid.WithRange(7, 9), machineid.WithTTL(2 * time.Second)}
	program := func(ids *machineid.Holder, err error) {
		t.Helper()
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		g, err := ringflake.New(ctx, ringflake.WithMachineIDSource(ids))
		require.NoError(t, err)
		id, err := g.NextID()
		require.NoError(t, err)
		assert.Equal(t, int64(7), ringflake.DefaultLayout().Decompose(id).Machine, "the lowest ID of the range")
		assert.True(t, ids.Lease().Held)
		require.NoError(t, g.Close())
		assert.ErrorIs(t, ids.Lease().Err, machineid.ErrReleased)
	}
	// Only the constructor and its client change.
	program(machineid_redis.New(rdb, opts...))
	program(machineid_etcd.New(etcd, opts...))
	program(machineid_postgres.New(pool, opts...))
	program(machineid_mysql.New(mysqlDB, opts...))
	program(machineid_file.New(dir, opts...))
	program(machineid_k8s.New(clientset.CoordinationV1(), opts...))
}
