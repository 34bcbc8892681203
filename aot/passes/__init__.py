"""Graph passes: each is a function Graph -> Graph."""
