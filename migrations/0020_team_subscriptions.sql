-- Every team has its subscription from the start (docs/billing.md): the teams made before get theirs,
-- active on the Launch plan, dated from the team's creation.
INSERT INTO `subscriptions` (`id`, `team_id`, `plan_slug`, `status`, `created_at`, `updated_at`)
SELECT 'sub_' || lower(hex(randomblob(10))), `id`, 'launch', 'active', `created_at`, `created_at`
FROM `teams` WHERE `id` NOT IN (SELECT `team_id` FROM `subscriptions`);
