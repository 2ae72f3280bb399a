# The two commands a new user runs: `make run` and `make test`.
VERSION ?= 0.1.0-dev
LDFLAGS := -X github.com/acme/app/internal/version.Version=$(VERSION)
GO ?= go
# The black-box acceptance suite is not part of this repository: ACCEPTANCE names its run.py
# and AREAS the areas to run (see docs/operations.md#tests).
ACCEPTANCE ?=

.PHONY: build run test bench lint fmt cover acceptance clean

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/app .

run: build
	./bin/app serve

test:
	$(GO) test -race -count=1 ./...

bench: build
	$(GO) test -run '^$$' -bench . -benchmem -count=1 ./...
	bash bench/serve_startup.sh

lint:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	@deps=$$($(GO) list -deps .) || exit 1; out=$$(echo "$$deps" | grep -E '^(testing(/.*)?|net/http/httptest)$$'); \
	if [ -n "$$out" ]; then echo "the binary links test packages:"; echo "$$out"; exit 1; fi

fmt:
	gofmt -w $$(git ls-files '*.go')

cover:
	$(GO) test -count=1 -coverprofile=coverage.out ./...
	$(GO) tool cover -func=coverage.out | tail -1

acceptance:
	@if [ -z "$(ACCEPTANCE)" ]; then \
		echo "make acceptance: set ACCEPTANCE to the acceptance suite's run.py, e.g. make acceptance ACCEPTANCE=path/to/run.py AREAS=health,auth" >&2; \
		exit 2; \
	fi
	$(MAKE) build
	python3 $(ACCEPTANCE) --bin bin/app --areas $(AREAS) --skip-file .ci/acceptance-skip

clean:
	rm -rf bin coverage.out
