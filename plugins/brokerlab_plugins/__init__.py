"""brokerlab's built-in plugins. Each subpackage is one plugin, registered through the entry-point
group ``brokerlab`` exactly as a third-party plugin would be."""

# brokerlab's import puts the guard of the compiled modules in place before any of ours loads.
import brokerlab  # noqa: F401
