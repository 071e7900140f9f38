"""The pipelines, one per kind (observe -> propose -> validate on a shadow -> recommend), their trial runner,
validation and evidence statistics. The service, the demo and every bench call these same functions."""
