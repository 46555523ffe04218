"""The one runner and what every stage command shares: options and clients (cli), the spec, rounds, the printed plan. May import statistics, batch and everything below them."""
