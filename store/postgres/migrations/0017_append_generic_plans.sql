-- runstream_append keeps one generic plan per statement.
--
-- Since 0014 the function's statements read the partitioned run_events
-- with the run's epoch as a parameter. PL/pgSQL caches each statement's
-- plan, and after five executions the plan cache compares the generic
-- plan's estimated cost with the average custom plan's. A generic plan
-- over a partitioned table is costed across every partition (pruning
-- happens at executor start), so it always looks dearer than a custom
-- plan pruned at planning time, and the cache replans every statement on
-- every call: the append then spent most of its time in the planner (in
-- a server-side loop, 2.2x slower than before partitioning). Forcing the
-- generic plan restores the one-plan-per-session behaviour; partition
-- pruning still happens, at executor start, from the parameter.
ALTER FUNCTION runstream_append(text, text, text, text, text, text, uuid, text,
    text, text, integer, integer, text, json, integer)
    SET plan_cache_mode = force_generic_plan;
