Feature: Refunding a purchase
  An operator can give a purchase back, Stars to the user and coins out of the account, but
  only while none of its coins was spent, set aside for an order, or expired. The coins leave
  the account before Telegram is asked, so they cannot be spent while the refund is under way;
  if Telegram cannot be reached, the refund waits and is finished later.

  Background:
    Given the user paid 50 Stars for 100 coins with charge "ch-1"

  Scenario: A purchase whose coins are untouched is refunded
    When an operator refunds charge "ch-1" because "bought by mistake"
    Then the refund of charge "ch-1" is done
    And Telegram has paid charge "ch-1" back
    And the user's coins are:
      | available | set aside | spent | expired |
      | 0         | 0         | 0     | 0       |
    And 100 coins of the user are recorded as refunded
    And the user is told the purchase was refunded

  Scenario: A purchase some of whose coins are set aside for an order cannot be refunded
    Given the user has ordered 1 copy
    When an operator refunds charge "ch-1" because "changed their mind"
    Then the refund is refused because none of its coins may have been used
    And the user has 95 coins available

  Scenario: A purchase cannot be refunded twice
    Given an operator has refunded charge "ch-1"
    When an operator refunds charge "ch-1" because "again"
    Then the refund is refused because it was already refunded

  Scenario: Telegram cannot be reached: the refund waits, and reconciliation finishes it
    Given Telegram cannot be reached
    When an operator refunds charge "ch-1" because "bought by mistake"
    Then the refund is refused because the provider could not be reached
    And the refund of charge "ch-1" is pending
    And the user has 0 coins available
    When Telegram can be reached again
    And the payments are reconciled
    Then the refund of charge "ch-1" is done
    And Telegram has paid charge "ch-1" back

  Scenario: Telegram refuses the refund: the coins come back
    Given Telegram has lost its record of charge "ch-1"
    When an operator refunds charge "ch-1" because "bought by mistake"
    Then the refund is refused because the provider refused it
    And the refund of charge "ch-1" is refused
    And the user has 100 coins available
