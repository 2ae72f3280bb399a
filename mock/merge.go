package mock

import "reflect"

// merge copies the non-zero fields of src over dst (both *T of a struct).
func merge[T any](dst *T, src T) {
	dv := reflect.ValueOf(dst).Elem()
	sv := reflect.ValueOf(src)
	for i := range sv.NumField() {
		if f := sv.Field(i); !f.IsZero() {
			dv.Field(i).Set(f)
		}
	}
}
