"""Backups: the file format (`fileformat`) and the restore engine (`restore`); a running KMA makes
backups through `kma.services.backups`."""
