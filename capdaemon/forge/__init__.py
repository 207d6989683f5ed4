"""The GitHub adapter: the only package that imports PyGithub (see client.Forge)."""
