package machineid_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ringflake/ringflake/machineid"
)

func TestProviders(t *testing.T) {
	t.Setenv("RF_TEST_ID", "17")
	t.Setenv("RF_TEST_BIG", "5000")
	t.Setenv("RF_TEST_NEG", "-1")
	t.Setenv("RF_TEST_WORD", "seven")
	t.Setenv("RF_TEST_EMPTY", " ")
	t.Setenv("RF_TEST_PADDED", " 12\n")
	t.Setenv("RF_TEST_PLUS", "+5")
	boom := errors.New("boom")
	tests := []struct {
		name    string
		svc     machineid.Source
		want    int64
		wantErr error
		msg     string // a fragment the error must contain
	}{
		{name: "negative max", svc: machineid.Env("RF_TEST_ID", -1), wantErr: machineid.ErrNotFound, msg: "max machine ID = -1"},
		{name: "env zero max", svc: machineid.Env("RF_TEST_ID", 0), wantErr: machineid.ErrNotFound, msg: "gave 17; valid range 0..0"},
		{name: "env", svc: machineid.Env("RF_TEST_ID", 1023), want: 17},
		{name: "env above max", svc: machineid.Env("RF_TEST_BIG", 1023), wantErr: machineid.ErrNotFound, msg: "env RF_TEST_BIG gave 5000; valid range 0..1023"},
		{name: "env negative", svc: machineid.Env("RF_TEST_NEG", 1023), wantErr: machineid.ErrNotFound},
		{name: "env unset", svc: machineid.Env("RF_TEST_UNSET_XYZ", 1023), wantErr: machineid.ErrNotFound, msg: "RF_TEST_UNSET_XYZ is not set"},
		{name: "env blank", svc: machineid.Env("RF_TEST_EMPTY", 1023), wantErr: machineid.ErrNotFound},
		{name: "env padded", svc: machineid.Env("RF_TEST_PADDED", 1023), want: 12},
		{name: "env plus sign", svc: machineid.Env("RF_TEST_PLUS", 1023), wantErr: machineid.ErrNotFound, msg: `"+5" is not a decimal integer`},
		{name: "env not a number", svc: machineid.Env("RF_TEST_WORD", 1023), wantErr: machineid.ErrNotFound, msg: `"seven" is not a decimal integer`},
		{name: "func", svc: machineid.FromFunc(31, func(context.Context) (int64, error) { return 31, nil }), want: 31},
		{name: "func above max", svc: machineid.FromFunc(31, func(context.Context) (int64, error) { return 32, nil }), wantErr: machineid.ErrNotFound, msg: "valid range 0..31"},
		{name: "func max", svc: machineid.FromFunc(31, func(context.Context) (int64, error) { return 0, nil }), want: 0},
		{name: "func negative", svc: machineid.FromFunc(31, func(context.Context) (int64, error) { return -1, nil }), wantErr: machineid.ErrNotFound, msg: "gave -1"},
		{name: "nil func", svc: machineid.FromFunc(1023, nil), wantErr: machineid.ErrNotFound, msg: "nil func"},
		{name: "func error", svc: machineid.FromFunc(31, func(context.Context) (int64, error) { return 0, boom }), wantErr: boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.svc.MachineID(context.Background())
			if tt.wantErr != nil {
				require.Error(t, err, "MachineID() = %d; want an error", got)
				assert.ErrorIs(t, err, tt.wantErr)
				assert.Contains(t, err.Error(), tt.msg)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got, "MachineID()")
		})
	}
}

func TestFromFuncPassesContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	svc := machineid.FromFunc(10, func(ctx context.Context) (int64, error) { return 0, ctx.Err() })
	_, err := svc.MachineID(ctx)
	assert.ErrorIs(t, err, context.Canceled, "FromFunc should pass the caller's context to fn")
}

func TestPlatformProvidersStayInRange(t *testing.T) {
	t.Parallel()
	// These read the real host, so only their contract is asserted: an ID
	// in range, or a not-found error.
	for _, tt := range []struct {
		name string
		svc  machineid.Source
	}{
		{"private IP", machineid.PrivateIP(1023)},
		{"StatefulSet ordinal", machineid.StatefulSetOrdinal(1023)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id, err := tt.svc.MachineID(context.Background())
			if err != nil {
				assert.ErrorIs(t, err, machineid.ErrNotFound)
				return
			}
			assert.GreaterOrEqual(t, id, int64(0))
			assert.LessOrEqual(t, id, int64(1023))
		})
	}
}
