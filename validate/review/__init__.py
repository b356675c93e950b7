"""`relpipe review`'s checks: the benchmark repository's review checklist as file facts.

`run(...)` gathers the inputs once (`context.Review`) and returns one `Result` per check id, in
the checklist's order. Modules: source (safe reads), scope (key -> launch path), recipe (srt-slurm
inheritance), shell (launch-script lines), owners (owners, checklist), images, models
(deprecated), launch (arch-hacks, engine-patches, chat-template, draft-as-shipped), waiver, plan
(golden-al, append-only, pareto, notes).
"""
