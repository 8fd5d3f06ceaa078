CREATE TABLE `deployment_log_chunks` (
	`deployment_id` text NOT NULL,
	`seq` integer NOT NULL,
	`chunk` text NOT NULL,
	`bytes` integer NOT NULL,
	PRIMARY KEY(`deployment_id`, `seq`)
);
--> statement-breakpoint
CREATE TABLE `deployments` (
	`id` text PRIMARY KEY NOT NULL,
	`pod_id` text NOT NULL,
	`trigger` text NOT NULL,
	`status` text NOT NULL,
	`stage` text NOT NULL,
	`commit_sha` text,
	`commit_message` text,
	`release` text,
	`rollback_of` text,
	`failure_class` text,
	`failure_message` text,
	`created_at` text NOT NULL,
	`started_at` text,
	`finished_at` text
);
--> statement-breakpoint
CREATE INDEX `deployments_pod_created_idx` ON `deployments` (`pod_id`,`created_at`);--> statement-breakpoint
CREATE UNIQUE INDEX `deployments_one_running_idx` ON `deployments` (`pod_id`) WHERE stage = 'running';--> statement-breakpoint
CREATE TABLE `git_configs` (
	`pod_id` text PRIMARY KEY NOT NULL,
	`repo_url` text NOT NULL,
	`repo_key` text NOT NULL,
	`branch` text NOT NULL,
	`auto_deploy` integer NOT NULL,
	`build_command` text,
	`token_encrypted` text,
	`webhook_secret_encrypted` text NOT NULL,
	`hook_id` text,
	`hook_note` text,
	`kept_releases` text DEFAULT '[]' NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `git_configs_repo_key_idx` ON `git_configs` (`repo_key`);--> statement-breakpoint
CREATE TABLE `git_webhook_deliveries` (
	`id` text PRIMARY KEY NOT NULL,
	`received_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `git_webhook_deliveries_received_idx` ON `git_webhook_deliveries` (`received_at`);