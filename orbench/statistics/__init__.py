"""The statistics of stage 5 and the report: designs, estimators, the corrected rate, planning, agreement, coverage simulations. May import refusal, tables, engine, protocol and the root."""
