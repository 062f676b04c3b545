"""The API's input serializer of each part a graduation bundle carries, by the bundle's key: a redeem checks
every item with the serializer a client's request to make it would meet (docs/graduation.md)."""
from platform_app.api.automation.alerts import AlertRuleInput
from platform_app.api.automation.cron import CronInput
from platform_app.api.automation.drains import LogDrainInput
from platform_app.api.domains.domains import DomainInput
from platform_app.api.env.env import EnvironmentInput, EnvVarInput
from platform_app.api.resources.components import ComponentCreateInput

BUNDLE_INPUTS = {"environments": EnvironmentInput, "envVars": EnvVarInput, "domains": DomainInput,
                 "cronJobs": CronInput, "logDrains": LogDrainInput, "alertRules": AlertRuleInput,
                 "components": ComponentCreateInput}
