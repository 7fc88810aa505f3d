package components

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/pulumi/pulumi-gcp/sdk/v8/go/gcp/cloudrunv2"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// poolLacks are the service container fields (by path) that pulumi-gcp v8's
// worker pool container does not have, with what replaces each. Cloud Run's
// API takes startup and liveness probes on worker pools (docs:
// run/docs/configuring/workerpools/healthchecks), but pulumi-gcp v8.41 (the
// Terraform provider before its September 2025 change #15156) cannot declare
// them; pulumi-gcp v9 can. Fields eventpipe never sets are refused by
// workerPoolContainer if they ever are (refusedOnPool).
var poolLacks = map[string]string{
	"Ports":                     "a worker pool takes no requests: no container has an ingress port",
	"StartupProbe":              "not declarable on a worker pool in pulumi-gcp v8: the consumer waits for its handler's health path itself (EVENTPIPE_HANDLER_HEALTH_PATH) before it pulls",
	"LivenessProbe":             "not declarable on a worker pool in pulumi-gcp v8: a consumer that stops pulling is not restarted; its subscription's oldest-unacked-age alert fires",
	"Resources.CpuIdle":         "a worker pool's CPU is always allocated",
	"Resources.StartupCpuBoost": "refused on a worker pool (eventpipe never sets it)",
	"BaseImageUri":              "refused on a worker pool (eventpipe never sets it)",
	"BuildInfos":                "an output of the service, never an input",
}

// samples are a value of each input type a service container's fields (and
// their fields) have, by the field's interface type: pulumi's scalars get a
// value naming the field, cloudrunv2's structs are filled field by field. A
// field of a type without a sample fails TestWorkerPoolContainerCarriesEveryField:
// add one, so the new field is converted and checked too.
func samples() map[reflect.Type]func(path string) reflect.Value {
	return map[reflect.Type]func(path string) reflect.Value{
		reflect.TypeFor[pulumi.StringInput]():    func(p string) reflect.Value { return reflect.ValueOf(pulumi.String("v-" + p)) },
		reflect.TypeFor[pulumi.StringPtrInput](): func(p string) reflect.Value { return reflect.ValueOf(pulumi.String("v-" + p)) },
		reflect.TypeFor[pulumi.StringArrayInput](): func(p string) reflect.Value {
			return reflect.ValueOf(pulumi.StringArray{pulumi.String("a-" + p), pulumi.String("b-" + p)})
		},
		reflect.TypeFor[pulumi.StringMapInput](): func(p string) reflect.Value {
			return reflect.ValueOf(pulumi.StringMap{"k-" + p: pulumi.String("v-" + p)})
		},
		reflect.TypeFor[cloudrunv2.ServiceTemplateContainerEnvArrayInput](): func(p string) reflect.Value {
			return reflect.ValueOf(cloudrunv2.ServiceTemplateContainerEnvArray{filled[cloudrunv2.ServiceTemplateContainerEnvArgs](p + "[0]")})
		},
		reflect.TypeFor[cloudrunv2.ServiceTemplateContainerEnvValueSourcePtrInput](): func(p string) reflect.Value {
			return reflect.ValueOf(filled[cloudrunv2.ServiceTemplateContainerEnvValueSourceArgs](p))
		},
		reflect.TypeFor[cloudrunv2.ServiceTemplateContainerEnvValueSourceSecretKeyRefPtrInput](): func(p string) reflect.Value {
			return reflect.ValueOf(filled[cloudrunv2.ServiceTemplateContainerEnvValueSourceSecretKeyRefArgs](p))
		},
		reflect.TypeFor[cloudrunv2.ServiceTemplateContainerResourcesPtrInput](): func(p string) reflect.Value {
			return reflect.ValueOf(filled[cloudrunv2.ServiceTemplateContainerResourcesArgs](p))
		},
		reflect.TypeFor[cloudrunv2.ServiceTemplateContainerVolumeMountArrayInput](): func(p string) reflect.Value {
			return reflect.ValueOf(cloudrunv2.ServiceTemplateContainerVolumeMountArray{filled[cloudrunv2.ServiceTemplateContainerVolumeMountArgs](p + "[0]")})
		},
	}
}

// filled is a T with every field a worker pool container can take set to a
// sample naming its path (fields in poolLacks stay nil).
func filled[T any](path string) *T {
	v := new(T)
	fill(reflect.ValueOf(v).Elem(), path)
	return v
}

func fill(v reflect.Value, path string) {
	for i := range v.NumField() {
		f := v.Type().Field(i)
		p := strings.TrimPrefix(path+"."+f.Name, ".")
		if _, lacks := poolLacks[fieldKey(p)]; lacks {
			continue
		}
		sample, ok := samples()[f.Type]
		if !ok {
			panic("no sample of " + f.Type.String() + " for field " + p + ": add one to samples")
		}
		v.Field(i).Set(sample(p))
	}
}

// fieldKey is a field path without list indexes (Envs[0].Name -> Envs.Name).
func fieldKey(path string) string {
	for strings.Contains(path, "[") {
		i, j := strings.Index(path, "["), strings.Index(path, "]")
		path = path[:i] + path[j+1:]
	}
	return path
}

// TestWorkerPoolContainerCarriesEveryField: a service container with every
// field set (built by reflection over pulumi-gcp's args struct, down through
// env, secret references, resources and mounts) converts to a worker pool
// container with the same value in every field of the same name. A service
// field the worker pool's type lacks must be in poolLacks with its reason,
// and poolLacks may name only such fields: a new field in either type fails
// here until it is carried or explained.
func TestWorkerPoolContainerCarriesEveryField(t *testing.T) {
	var svc *cloudrunv2.ServiceTemplateContainerArgs
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatal(r)
			}
		}()
		svc = filled[cloudrunv2.ServiceTemplateContainerArgs]("")
	}()
	pool, err := workerPoolContainer(svc)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	compare(t, reflect.ValueOf(svc).Elem(), reflect.ValueOf(pool).Elem(), "", seen)
	for path, why := range poolLacks {
		if !seen[path] {
			t.Errorf("poolLacks names %s (%s), which the service container does not have, or the worker pool's does", path, why)
		}
		if why == "" {
			t.Errorf("poolLacks: %s has no reason", path)
		}
	}
}

// compare checks that every field of the service value svc is carried to
// the worker pool value pool (structs of the two families, field by name).
func compare(t *testing.T, svc, pool reflect.Value, path string, lacking map[string]bool) {
	t.Helper()
	for i := range svc.NumField() {
		name := svc.Type().Field(i).Name
		p := strings.TrimPrefix(path+"."+name, ".")
		pf := pool.FieldByName(name)
		if _, lacks := poolLacks[fieldKey(p)]; lacks {
			lacking[fieldKey(p)] = !pf.IsValid()
			continue
		}
		if !pf.IsValid() {
			t.Errorf("the worker pool container has no %s: carry the service's in workerPoolContainer's stead or add it to poolLacks with what replaces it", p)
			continue
		}
		sv, pv := svc.Field(i).Elem(), pf.Elem()
		if !pv.IsValid() {
			t.Errorf("%s is dropped by workerPoolContainer: want %v", p, sv.Interface())
			continue
		}
		switch {
		case sv.Kind() == reflect.Pointer && sv.Elem().Kind() == reflect.Struct:
			compare(t, sv.Elem(), pv.Elem(), p, lacking)
		case sv.Kind() == reflect.Slice && sv.Type().Elem().Kind() == reflect.Interface && sv.Len() > 0 && sv.Index(0).Elem().Kind() == reflect.Pointer:
			if sv.Len() != pv.Len() {
				t.Errorf("%s: %d items, want %d", p, pv.Len(), sv.Len())
				continue
			}
			for j := range sv.Len() {
				compare(t, sv.Index(j).Elem().Elem(), pv.Index(j).Elem().Elem(), p+"["+strconv.Itoa(j)+"]", lacking)
			}
		default:
			if !reflect.DeepEqual(sv.Interface(), pv.Interface()) {
				t.Errorf("%s = %v on the worker pool, want %v", p, pv.Interface(), sv.Interface())
			}
		}
	}
}

// TestWorkerPoolContainerRefuses: a field a worker pool cannot take and
// nothing replaces is an error, never silently dropped.
func TestWorkerPoolContainerRefuses(t *testing.T) {
	for name, c := range map[string]*cloudrunv2.ServiceTemplateContainerArgs{
		"baseImageUri": {Name: pulumi.String("c"), BaseImageUri: pulumi.String("us-central1-docker.pkg.dev/serverless-runtimes/google-22/runtimes/go123")},
		"startupCpuBoost": {Name: pulumi.String("c"),
			Resources: &cloudrunv2.ServiceTemplateContainerResourcesArgs{StartupCpuBoost: pulumi.Bool(true)}},
	} {
		if _, err := workerPoolContainer(c); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err = %v, want one naming it", name, err)
		}
	}
}
