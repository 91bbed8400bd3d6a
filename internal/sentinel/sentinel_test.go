package sentinel

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestName(t *testing.T) {
	t.Parallel()
	errX := New("pkg: something failed")
	plain := errors.New("dial tcp: refused")
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"a plain error gets the name", fmt.Errorf("taking: %w", plain), "store: taking: dial tcp: refused"},
		{"a sentinel's kind keeps its own", fmt.Errorf("%w: 3 of 3 held", errX), "pkg: something failed: 3 of 3 held"},
		{"a wrapped sentinel keeps its own", fmt.Errorf("renewing: %w", errX), "renewing: pkg: something failed"},
		{"a named error is not named twice", fmt.Errorf("getting: %w", Name("store", plain)), "getting: store: dial tcp: refused"},
		{"nil stays nil", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Name("store", tt.err)
			if tt.err == nil {
				assert.NoError(t, got)
				return
			}
			assert.Equal(t, tt.want, got.Error())
			assert.ErrorIs(t, got, tt.err, "Name wraps err")
			assert.True(t, Named(got), "Name's result is named")
		})
	}
	assert.False(t, Named(plain))
	assert.True(t, Named(fmt.Errorf("%w; and %w", plain, errX)), "a join with a sentinel names a package")
}
