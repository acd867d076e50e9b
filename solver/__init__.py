"""fleetplan's computations: capacity model, integer program, checks, replay, exports, CLI."""
