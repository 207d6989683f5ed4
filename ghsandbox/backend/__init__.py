"""The sandbox backend in layers: base → accounts → repos → issues → checks → pulls."""
