"""brokerlab's built-in plugins. Each subpackage is one plugin, registered through the entry-point
group ``brokerlab`` exactly as a third-party plugin would be."""
