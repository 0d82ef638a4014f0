"""Client populations (users encoding their records) and the analyzer's publication, shared by every shuffler."""
