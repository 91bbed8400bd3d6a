package machineid_k8s_test

import (
	"context"
	"fmt"
	"log"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ringflake/ringflake"
	"github.com/ringflake/ringflake/machineid"
	"github.com/ringflake/ringflake/machineid_k8s"
)

// A generator on a Lease, in a pod: it takes the lowest free machine ID in
// the pod's namespace, follows the lease, and releases it on Close. It
// needs a cluster, so it has no output to check.
func Example() {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		log.Fatal(err) // not in a pod
	}
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		log.Fatal(err)
	}
	holder, err := machineid_k8s.New(clientset.CoordinationV1(), machineid.WithRange(0, 1023))
	if err != nil {
		log.Fatal(err)
	}
	gen, err := ringflake.New(context.Background(), ringflake.WithMachineIDSource(holder))
	if err != nil {
		log.Fatal(err) // forbidden by RBAC, every ID held, ...
	}
	defer gen.Close() // releases the lease
	id, err := gen.NextID()
	if err != nil {
		log.Fatal(err) // ringflake.ErrLeaseLost while the API server cannot confirm the lease
	}
	fmt.Println(id)
}

// Lease names must be DNS subdomains, so New refuses a prefix that would
// not make one, before contacting the API server.
func ExampleWithPrefix() {
	clientset, err := kubernetes.NewForConfig(&rest.Config{Host: "https://kubernetes.default.svc"})
	if err != nil {
		log.Fatal(err)
	}
	_, err = machineid_k8s.New(clientset.CoordinationV1(), machineid_k8s.WithPrefix("orders-machine-"))
	fmt.Println(err)
	_, err = machineid_k8s.New(clientset.CoordinationV1(), machineid_k8s.WithPrefix("Orders_"))
	fmt.Println(err)
	// Output:
	// <nil>
	// ringflake: invalid configuration: prefix = "Orders_"; valid: up to 200 lower-case letters, digits, '-' and '.', beginning with a letter or digit
}

// New refuses a namespace that is not a DNS label, as the API server
// would, before contacting it.
func ExampleNew_invalid() {
	clientset, err := kubernetes.NewForConfig(&rest.Config{Host: "https://kubernetes.default.svc"})
	if err != nil {
		log.Fatal(err)
	}
	_, err = machineid_k8s.New(clientset.CoordinationV1(), machineid_k8s.WithNamespace("ids"), machineid_k8s.WithIdentity("pod-a"))
	fmt.Println(err)
	_, err = machineid_k8s.New(clientset.CoordinationV1(), machineid_k8s.WithNamespace("IDs"))
	fmt.Println(err)
	// Output:
	// <nil>
	// ringflake: invalid configuration: namespace = "IDs"; valid: a DNS label: up to 63 lower-case letters, digits and '-', beginning and ending with a letter or digit
}
