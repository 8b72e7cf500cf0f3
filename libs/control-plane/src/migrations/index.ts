export { ControlPlane1732400000000 as ControlPlaneMigration } from './1732400000000-control-plane';
