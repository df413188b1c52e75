"""Storage adapters implementing the repository port."""
