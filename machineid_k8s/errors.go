package machineid_k8s

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// explain wraps err, from the API server or the way to it, with what the
// store was doing and, for the refusals a user can fix, how: the API
// server's own message says which verb on which resource in which
// namespace RBAC did not allow, or which namespace does not exist.
func (s *store) explain(doing string, err error) error {
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s: %w; the identity needs get, list, create and update on leases in the namespace %s: apply the Role ringflake-leases and its RoleBinding from deploy/kubernetes (role.yaml, rolebinding.yaml), binding your identity",
			doing, err, s.namespace)
	case missingNamespace(err):
		return fmt.Errorf("%s: the namespace %s does not exist: %w", doing, s.namespace, err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("%s: the API server did not accept the credentials: %w", doing, err)
	}
	return fmt.Errorf("%s in the namespace %s: %w", doing, s.namespace, err)
}

// missingNamespace reports whether err is the API server's answer to a
// write into a namespace that does not exist: NotFound, about a namespace.
func missingNamespace(err error) bool {
	var st apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &st) {
		return false
	}
	d := st.Status().Details
	return d != nil && d.Kind == "namespaces"
}
