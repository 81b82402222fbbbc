"""The store: the only package that runs SQL. One module per table family."""
