"""The `orbench` command and the commands that chain stages (eval, run_pipeline.sh's checks). May import every other package."""
