package store

import (
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"sync"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/ringflake/ringflake/machineid"
	mk "github.com/ringflake/ringflake/machineid_k8s"
)

// k8sParams are the query parameters of a k8s:// URL.
var k8sParams = map[string]func(string) machineid.Option{
	"prefix":   mk.WithPrefix,
	"identity": mk.WithIdentity,
}

// k8sLease is the backend of k8s:// URLs: k8s://NAMESPACE[?prefix=P&identity=NAME],
// Lease objects in NAMESPACE (if empty, the kubeconfig context's, or the
// pod's), on the cluster that kubeConfig finds.
func k8sLease(u *url.URL, c Config) (machineid.Leaser, func(), error) {
	switch {
	case u.User != nil:
		return nil, nil, fmt.Errorf("k8s:// takes no user or password; the credentials come from the kubeconfig or the pod's service account")
	case u.Path != "" && u.Path != "/":
		return nil, nil, fmt.Errorf("k8s:// takes a namespace and no path (%s); want k8s://NAMESPACE", u.Path)
	case u.Port() != "":
		return nil, nil, fmt.Errorf("k8s:// takes a namespace, not host:port (%s); the API server's address comes from the kubeconfig", u.Host)
	}
	opts := c.common()
	for k, v := range u.Query() {
		with, ok := k8sParams[k]
		if !ok {
			return nil, nil, fmt.Errorf("unexpected query parameter %q; k8s:// takes prefix=P and identity=NAME", k)
		}
		opts = append(opts, with(v[len(v)-1]))
	}
	cfg, ns, err := kubeConfig()
	if err != nil {
		return nil, nil, err
	}
	if u.Host != "" {
		ns = u.Host
	}
	if ns != "" {
		opts = append(opts, mk.WithNamespace(ns))
	}
	cfg.UserAgent = "ringflake"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	quietKlog()
	l, err := mk.New(client.CoordinationV1(), opts...)
	if err != nil {
		return nil, nil, err
	}
	return l, func() {}, nil
}

// kubeConfig returns the cluster's configuration, as kubectl finds it:
// from $KUBECONFIG or ~/.kube/config; or, in a pod (KUBERNETES_SERVICE_HOST
// set) with no $KUBECONFIG, the pod's own service account. It returns the
// kubeconfig context's namespace too ("default" if it names none), or ""
// in a pod, where the store reads the pod's.
func kubeConfig() (*rest.Config, string, error) {
	if os.Getenv("KUBERNETES_SERVICE_HOST") != "" && os.Getenv("KUBECONFIG") == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, "", fmt.Errorf("in a pod (KUBERNETES_SERVICE_HOST is set) without $KUBECONFIG: %w", err)
		}
		return cfg, "", nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	kc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	cfg, err := kc.ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		where := "~/.kube/config"
		if env := os.Getenv("KUBECONFIG"); env != "" {
			where = "$KUBECONFIG (" + env + ")"
		}
		return nil, "", fmt.Errorf("no kubeconfig: %s names no cluster; set KUBECONFIG to a kubeconfig file, or run in a pod", where)
	}
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	ns, _, err := kc.Namespace() // "default" if the context names none
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	return cfg, ns, nil
}

// quietKlog sends client-go's log lines (klog, a package-level logger)
// nowhere, once: they would break the one-line error rule, and failures
// reach the user as errors instead.
var quietKlog = sync.OnceFunc(func() {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	klog.SetOutput(io.Discard)
})
