-- The edge's route change feed (worker/db/schema/edge-route-changes.ts, docs/edge.md): every change
-- of what a host name routes to, whoever makes it, is a row each isolate's route cache reads.
CREATE TRIGGER `edge_route_pod_insert` AFTER INSERT ON `pods` BEGIN
  INSERT INTO `edge_route_changes` (`key`, `at`) VALUES ('p:' || NEW.`name`, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER));
END;
--> statement-breakpoint
CREATE TRIGGER `edge_route_pod_update` AFTER UPDATE OF `status`, `host_id`, `name` ON `pods`
WHEN OLD.`status` IS NOT NEW.`status` OR OLD.`host_id` IS NOT NEW.`host_id` OR OLD.`name` IS NOT NEW.`name` BEGIN
  INSERT INTO `edge_route_changes` (`key`, `at`) VALUES ('p:' || OLD.`name`, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER));
  INSERT INTO `edge_route_changes` (`key`, `at`) SELECT 'p:' || NEW.`name`, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) WHERE NEW.`name` IS NOT OLD.`name`;
  INSERT INTO `edge_route_changes` (`key`, `at`) SELECT 'd:' || `domain`, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) FROM `domains` WHERE `pod_id` = NEW.`id` AND `status` = 'verified';
END;
--> statement-breakpoint
CREATE TRIGGER `edge_route_pod_delete` AFTER DELETE ON `pods` BEGIN
  INSERT INTO `edge_route_changes` (`key`, `at`) VALUES ('p:' || OLD.`name`, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER));
END;
--> statement-breakpoint
CREATE TRIGGER `edge_route_domain_insert` AFTER INSERT ON `domains` WHEN NEW.`status` = 'verified' BEGIN
  INSERT INTO `edge_route_changes` (`key`, `at`) VALUES ('d:' || NEW.`domain`, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER));
END;
--> statement-breakpoint
CREATE TRIGGER `edge_route_domain_update` AFTER UPDATE OF `status`, `pod_id`, `domain` ON `domains`
WHEN OLD.`status` IS NOT NEW.`status` OR OLD.`pod_id` IS NOT NEW.`pod_id` OR OLD.`domain` IS NOT NEW.`domain` BEGIN
  INSERT INTO `edge_route_changes` (`key`, `at`) VALUES ('d:' || OLD.`domain`, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER));
  INSERT INTO `edge_route_changes` (`key`, `at`) SELECT 'd:' || NEW.`domain`, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) WHERE NEW.`domain` IS NOT OLD.`domain`;
END;
--> statement-breakpoint
CREATE TRIGGER `edge_route_domain_delete` AFTER DELETE ON `domains` WHEN OLD.`status` = 'verified' BEGIN
  INSERT INTO `edge_route_changes` (`key`, `at`) VALUES ('d:' || OLD.`domain`, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER));
END;
--> statement-breakpoint
CREATE TRIGGER `edge_route_host_update` AFTER UPDATE OF `status`, `ingress_origin`, `agent_token_hash` ON `hosts`
WHEN OLD.`status` IS NOT NEW.`status` OR OLD.`ingress_origin` IS NOT NEW.`ingress_origin` OR OLD.`agent_token_hash` IS NOT NEW.`agent_token_hash` BEGIN
  INSERT INTO `edge_route_changes` (`key`, `at`) VALUES ('*', CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER));
END;
--> statement-breakpoint
CREATE TRIGGER `edge_route_host_delete` AFTER DELETE ON `hosts` BEGIN
  INSERT INTO `edge_route_changes` (`key`, `at`) VALUES ('*', CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER));
END;
