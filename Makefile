# spyder — build and test. `make test` is what CI runs.
GO      ?= go
PKGS    ?= ./...
export SPYDER_REQUIRE_REDIS = 1

.PHONY: all build test deps vet fmt bench soak clean

all: build

build:
	$(GO) build -o bin/spyder ./cmd/spyder

# deps installs what the tests need when it is missing: redis-server (apt-get).
deps:
	@command -v redis-server >/dev/null 2>&1 || { \
		echo "installing redis-server (apt-get)"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
		$$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; }
	@redis-server --version

vet:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
		if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

test: deps vet
	$(GO) test -race -count=1 -timeout 30m $(PKGS)

bench: deps
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m $(PKGS)

soak: deps
	SPYDER_SOAK=1 $(GO) test -race -count=1 -timeout 80m $(PKGS)

clean:
	rm -rf bin
