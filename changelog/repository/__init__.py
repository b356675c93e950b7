"""The benchmark repository (InferenceX and its kind): one declaration per era it has had, one
registry of them, one detection (with the `.relpipe.toml` override) used by every command and by
the commit hook, and the functions that map a config key to its launch files.

- `era`: the `Era` record (what one era of the repository is: its files, schemas, placeholder
  policy, what each pre-commit hook watches, where a key's golden acceptance length comes from,
  which of its own programs is the authority);
- `eras`: the declarations and the registry (`ERAS`); adding an era is one declaration there
  plus a fixture;
- `detect`: which era a checkout is (by its files), the override file, paths kept inside the
  checkout; standard library only, no pathlib (the hook imports it on every commit);
- `checkout`: a `Checkout` (root + era) for the commands;
- `launch`: config key -> launch files (recipes, scripts, runner hooks).

No other module of relpipe holds a path of the benchmark repository (tests/test_layering.py).
This package's `__init__` imports nothing, so the hook pays only for the modules it uses.
"""
