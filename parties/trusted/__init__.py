"""The in-process trusted shuffler party (simulation backend) and its run plan."""
