package main

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ringflake/ringflake/internal/etcdtest"
)

// gen leases its machine ID from etcd: while one process holds an ID,
// another gets a different one, and etcd shows the holder's key.
func TestCLIEtcdLease(t *testing.T) {
	t.Parallel()
	bin := buildCLI(t)
	cl := etcdtest.StartCluster(t)
	var hosts []string
	for _, u := range cl.Endpoints() {
		hosts = append(hosts, strings.TrimPrefix(u, "http://"))
	}
	url := "etcd://" + strings.Join(hosts, ",") + "?prefix=cli/"
	held := holdLease(t, bin, url)
	other := genMachine(t, bin, url, 1000)
	assert.NotEqual(t, held, other, "a second process should get another machine ID while the first holds its lease")

	assert.Equal(t, []int64{held}, owners(t, cl, "cli/"),
		"the holder's ID should be the one owned under the prefix; the second process released its own")
}

// etcdOwners returns the machine IDs owned in cl under the default prefix.
func etcdOwners(t *testing.T, cl *etcdtest.Cluster) []int64 {
	t.Helper()
	return owners(t, cl, "ringflake/machineid/")
}

// owners returns the machine IDs owned in cl under prefix, in order.
func owners(t *testing.T, cl *etcdtest.Cluster, prefix string) []int64 {
	t.Helper()
	client, err := clientv3.New(clientv3.Config{Endpoints: cl.Endpoints(), Logger: zap.NewNop()})
	require.NoError(t, err)
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := client.Get(ctx, prefix+"owner/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	require.NoError(t, err)
	var ids []int64
	for _, kv := range resp.Kvs {
		id, err := strconv.ParseInt(strings.TrimPrefix(string(kv.Key), prefix+"owner/"), 10, 64)
		require.NoError(t, err, "key %s", kv.Key)
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func TestCLIEtcdUnreachable(t *testing.T) {
	t.Parallel()
	checkUnreachable(t, buildCLI(t), "etcd://"+deadPort(t))
}
