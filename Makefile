# The two commands: `make demo` runs the main job, `make test` runs the tests. Both bootstrap first.
.PHONY: bootstrap demo test test-slow bench-knobs bench-indexes bench-service bench-faults bench-learned serve clean

bootstrap:
	@bash scripts/bootstrap.sh

# ENGINE=mariadb runs the demo and the benches on MariaDB (default: postgres)
ENGINE ?= postgres

demo: bootstrap
	.venv/bin/advisor demo --engine $(ENGINE)

# the import-linter contracts ([tool.importlinter] in pyproject.toml) are a test (tests/test_layers.py), and so is
# the import-cycle check (tests/test_import_cycles.py): a broken one fails the target, and plain pytest checks them.
# Two workers (pytest-xdist), each test file on one worker with its own servers: most tests wait on PostgreSQL
test: bootstrap
	.venv/bin/python -m pytest -n 2 --dist loadfile

test-slow: bootstrap
	.venv/bin/python -m pytest -m slow

bench-knobs: bootstrap
	.venv/bin/advisor bench knobs --engine $(ENGINE)

bench-indexes: bootstrap
	.venv/bin/advisor bench indexes --workloads tpch,app,job --engine $(ENGINE)

bench-service: bootstrap
	.venv/bin/advisor bench service --engine $(ENGINE)

# faults injected against real servers (see README); exits 1 unless every fault is recovered or refused, 0 rows lost
bench-faults: bootstrap
	.venv/bin/advisor bench faults --engine $(ENGINE)

# issue 31's grid at a size that ends in about 20 minutes on 2 quiet cores (the command's defaults are larger)
bench-learned: bootstrap
	.venv/bin/advisor bench learned-index --datasets books,fb,osm --seeds 1,2 --keys 100000 --budget 24

serve: bootstrap
	.venv/bin/advisor serve

clean:
	rm -rf .venv .pytest_cache
